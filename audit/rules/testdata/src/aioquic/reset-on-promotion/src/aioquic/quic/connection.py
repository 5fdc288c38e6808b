# a variant: promotion resets the recovery, PATH_RESPONSE samples the RTT
class QuicNetworkPath:
    def __init__(self, addr):
        self.addr = addr
        self.is_validated = False


class QuicConnection:
    def __init__(self, configuration):
        self._loss = QuicPacketRecovery(
            initial_rtt=configuration.initial_rtt,
            peer_completed_address_validation=True,
        )
        self._network_paths = []

    def change_connection_id(self):
        self._consume_peer_cid()

    def receive_datagram(self, data, addr, now):
        network_path = self._find_network_path(addr)
        if network_path is not self._network_paths[0]:
            self._network_paths.remove(network_path)
            self._network_paths.insert(0, network_path)
            self._loss.reset()

    def _handle_path_response_frame(self, context, frame_type, buf):
        data = buf.pull_bytes(8)
        context.network_path.is_validated = True
        self._loss._rtt_latest = now - context.network_path.challenge_sent
