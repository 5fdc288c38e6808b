namespace quic {
struct QuicConnectionStateBase {
  uint64_t udpSendPacketLen{kDefaultUDPSendPacketLen};
};
} // namespace quic
