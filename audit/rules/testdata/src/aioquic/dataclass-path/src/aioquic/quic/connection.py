# shape of aioquic before 1.1: QuicNetworkPath is a dataclass (no __init__)
@dataclass
class QuicNetworkPath:
    addr: NetworkAddress
    is_validated: bool = False


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

    def _handle_path_response_frame(self, context, frame_type, buf):
        data = buf.pull_bytes(8)
        context.network_path.is_validated = True
