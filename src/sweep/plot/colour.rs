//! The heatmaps' colour scale: light for low values, dark for high ones (ColorBrewer's
//! sequential "YlOrRd", pale yellow through orange to dark red), and the ink that stays readable
//! on each colour.

use plotters::style::RGBColor;

/// ColorBrewer's 9-class YlOrRd (Cynthia Brewer, colorbrewer2.org), low to high: the colours
/// between two stops are interpolated linearly in sRGB.
const STOPS: [(u8, u8, u8); 9] = [
    (255, 255, 204),
    (255, 237, 160),
    (254, 217, 118),
    (254, 178, 76),
    (253, 141, 60),
    (252, 78, 42),
    (227, 26, 28),
    (189, 0, 38),
    (128, 0, 38),
];

/// The colour of `v` on a scale from 0 to `top` (clamped to the scale's ends; NaN is the low
/// end).
pub(super) fn colour(v: f64, top: f64) -> RGBColor {
    let t = if top > 0.0 { v / top } else { 0.0 };
    let t = if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) };
    let pos = t * (STOPS.len() - 1) as f64;
    let k = (pos.floor() as usize).min(STOPS.len() - 2);
    let f = pos - k as f64;
    let mix = |a: u8, b: u8| (a as f64 + (b as f64 - a as f64) * f).round() as u8;
    let (a, b) = (STOPS[k], STOPS[k + 1]);
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// Relative luminance of `c` (WCAG 2: 0 black, 1 white).
pub(super) fn luminance(c: RGBColor) -> f64 {
    let lin = |u: u8| {
        let s = u as f64 / 255.0;
        if s <= 0.04045 {
            s / 12.92
        } else {
            ((s + 0.055) / 1.055).powf(2.4)
        }
    };
    0.2126 * lin(c.0) + 0.7152 * lin(c.1) + 0.0722 * lin(c.2)
}

/// Black on light colours, white on dark ones (whichever contrasts more, by WCAG's ratio).
pub(super) fn ink(c: RGBColor) -> RGBColor {
    let l = luminance(c);
    if (l + 0.05) / 0.05 >= 1.05 / (l + 0.05) {
        RGBColor(0, 0, 0)
    } else {
        RGBColor(255, 255, 255)
    }
}

/// The colour bar's ticks for data up to `max` (≥ 0): about five round steps (1, 2, 2.5 or 5
/// times a power of ten) from 0 to the first step at or above `max`. The last tick is the top
/// of the scale.
pub(super) fn ticks(max: f64) -> Vec<f64> {
    let max = if max.is_finite() && max > 0.0 {
        max
    } else {
        1.0
    };
    let raw = max / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|&s| s >= raw * (1.0 - 1e-9))
        .unwrap_or(10.0 * mag);
    let n = (max / step - 1e-9).ceil().max(1.0) as usize;
    (0..=n).map(|i| i as f64 * step).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_low_end_is_light_and_the_high_end_dark() {
        assert!(luminance(colour(0.0, 1.0)) > 0.9);
        assert!(luminance(colour(1.0, 1.0)) < 0.1);
        assert!(luminance(colour(0.1, 1.0)) > 0.8);
        assert_eq!(ink(colour(0.0, 1.0)), RGBColor(0, 0, 0));
        assert_eq!(ink(colour(1.0, 1.0)), RGBColor(255, 255, 255));
        let l: Vec<f64> = (0..=20)
            .map(|i| luminance(colour(i as f64 / 20.0, 1.0)))
            .collect();
        assert!(l.windows(2).all(|w| w[1] < w[0]), "{l:?}");
    }

    #[test]
    fn ticks_are_round_and_cover_the_data() {
        assert_eq!(ticks(1.0), [0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0]);
        assert_eq!(ticks(46.5), [0.0, 10.0, 20.0, 30.0, 40.0, 50.0]);
        assert_eq!(ticks(0.0), ticks(1.0));
        assert_eq!(ticks(3.0), [0.0, 1.0, 2.0, 3.0]);
    }
}
