const BETA_CUBIC: f64 = 0.7;

impl Congestion {
    pub(crate) fn from_config(recovery_config: &RecoveryConfig) -> Self {
        let initial_congestion_window = recovery_config.max_send_udp_payload_size *
            recovery_config.initial_congestion_window_packets;
        Congestion { congestion_window: initial_congestion_window }
    }
}
