# The recovery class renamed: the rules must say what they could not find.
class QuicPacketRecoveryV2:
    def __init__(self, initial_rtt, peer_completed_address_validation, send_probe):
        self.rtt_initial = initial_rtt
