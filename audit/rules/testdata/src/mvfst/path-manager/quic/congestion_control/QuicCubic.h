namespace quic {
class Cubic {
 public:
  explicit Cubic(
      QuicConnectionStateBase& conn,
      uint64_t initCwndBytes = 0,
      uint64_t initSsthresh = std::numeric_limits<uint64_t>::max());
};
} // namespace quic
