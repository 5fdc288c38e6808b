const INITIAL_RTT: Duration = Duration::from_millis(333);

const INITIAL_WINDOW_PACKETS: usize = 10;

const MINIMUM_WINDOW_PACKETS: usize = 2;

impl Recovery {
    pub fn new_with_config(recovery_config: &RecoveryConfig) -> Self {
        let initial_congestion_window =
            recovery_config.max_send_udp_payload_size * INITIAL_WINDOW_PACKETS;
        Recovery { congestion_window: initial_congestion_window }
    }

    fn on_connection_migration(&mut self) {
        self.congestion_window = 0;
    }
}
