const DEFAULT_SEND_UDP_PAYLOAD_SIZE: usize = 1200;
const INITIAL_RTT: Duration = Duration::from_millis(333);

impl Default for RecoveryConfig {
    fn default() -> RecoveryConfig {
        RecoveryConfig {
            max_datagram_size: DEFAULT_SEND_UDP_PAYLOAD_SIZE,
            congestion_control_algorithm: CongestionControlAlgorithm::Bbr,
            min_congestion_window: 2_u64,
            initial_congestion_window: 10_u64,
            initial_rtt: INITIAL_RTT,
        }
    }
}
