namespace quic {
struct TransportSettings {
  CongestionControlType defaultCongestionController{
      CongestionControlType::Cubic};
  uint64_t initCwndInMss{kInitCwndInMss};
  uint64_t minCwndInMss{kMinCwndInMss};
  uint64_t maxCwndInMss{kDefaultMaxCwndInMss};
  bool disableMigration{true};
  std::chrono::microseconds initialRtt{kDefaultInitialRtt};
};
} // namespace quic
