class QuicPacketRecovery:
    def __init__(self, initial_rtt, peer_completed_address_validation):
        self._rtt_initial = initial_rtt
        self._rtt_initialized = False
        self._rtt_smoothed = 0.0
        self._cc = RenoCongestionControl()
