// shape of s2n-quic's Cubic before application settings: initial_window's formula is its tail expression
const BETA_CUBIC: f32 = 0.7;

impl CubicCongestionController {
    fn initial_window(max_datagram_size: u16) -> u32 {
        const INITIAL_WINDOW_LIMIT: u32 = 14720;
        min(
            10 * max_datagram_size as u32,
            max(INITIAL_WINDOW_LIMIT, 2 * max_datagram_size as u32),
        )
    }
}

impl Cubic {
    fn minimum_window(&self) -> f32 {
        2.0 * self.max_datagram_size as f32
    }
}
