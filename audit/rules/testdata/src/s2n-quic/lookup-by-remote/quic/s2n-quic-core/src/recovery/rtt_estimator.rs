// shape of s2n-quic's RttEstimator before for_new_path: every estimator starts at DEFAULT_INITIAL_RTT
impl RttEstimator {
    pub fn new(max_ack_delay: Duration) -> Self {
        let smoothed_rtt = DEFAULT_INITIAL_RTT;
        let rttvar = DEFAULT_INITIAL_RTT / 2;
        Self { latest_rtt: DEFAULT_INITIAL_RTT, min_rtt: DEFAULT_INITIAL_RTT, smoothed_rtt, rttvar, max_ack_delay }
    }
}

pub const DEFAULT_INITIAL_RTT: Duration = Duration::from_millis(333);
