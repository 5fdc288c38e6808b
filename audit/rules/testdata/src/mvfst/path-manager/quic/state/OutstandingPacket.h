namespace quic {
struct OutstandingPacketMetadata {
  TimePoint time;
  PathIdType pathId{0};
};
} // namespace quic
