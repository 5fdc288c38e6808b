namespace quic {
class QuicClientTransportLite {
 public:
  void onNetworkSwitch(std::unique_ptr<QuicAsyncUDPSocket> newSock);
  quic::Expected<void, QuicError> migrateConnection(PathIdType pathId);
};
} // namespace quic
