# shape of aioquic's recovery.py before 1.0: the one controller (NewReno) lives here
K_INITIAL_RTT = 0.5  # seconds
K_MAX_DATAGRAM_SIZE = 1280
K_INITIAL_WINDOW = 10 * K_MAX_DATAGRAM_SIZE
K_MINIMUM_WINDOW = 2 * K_MAX_DATAGRAM_SIZE
K_LOSS_REDUCTION_FACTOR = 0.5


class QuicCongestionControl:
    def __init__(self) -> None:
        self.bytes_in_flight = 0
        self.congestion_window = K_INITIAL_WINDOW

    def on_packets_lost(self, packets, now):
        if lost_largest_time > self._congestion_recovery_start_time:
            self.congestion_window = max(
                int(self.congestion_window * K_LOSS_REDUCTION_FACTOR), K_MINIMUM_WINDOW
            )


class QuicPacketRecovery:
    def __init__(self, initial_rtt, peer_completed_address_validation):
        self._rtt_initial = initial_rtt
        self._rtt_initialized = False
        self._rtt_smoothed = 0.0
        self._cc = QuicCongestionControl()
