//! Background load: other requests that hold a connection of the same pool (not traced per
//! request; they show in the pool gauges and in ticket requests' waits).

use std::rc::Rc;

use super::dist;
use super::refunds_service::{acquire, release};
use super::world::{Ids, World};
use crate::sim::SimTime;

/// Generates Poisson arrivals at `background_load.rate_per_s` until the horizon; each waits for
/// a connection (FIFO with ticket requests) and holds it for a `hold` draw.
pub async fn generate(w: Rc<World>) {
    let rate = w.cfg.background_load.rate_per_s;
    if rate <= 0.0 {
        return;
    }
    let horizon = SimTime::from_duration(w.cfg.horizon);
    let mut rng = w.stream("background_arrivals", &[]);
    let mut n = 0u64;
    loop {
        let next = w.now() + dist::interarrival(&mut rng, rate);
        if next >= horizon {
            return;
        }
        w.sim.sleep_until(next).await;
        w.sim.spawn_detached(one_request(w.clone(), n));
        n += 1;
    }
}

async fn one_request(w: Rc<World>, n: u64) {
    let hold = dist::latency(
        &mut w.stream("background_hold", &[n]),
        &w.cfg.background_load.hold,
    );
    if let Some(permit) = acquire(&w, Ids::default()).await {
        w.sim.sleep(hold).await;
        drop(permit);
        release(&w, Ids::default());
    }
}
