namespace quic {
constexpr uint64_t kDefaultV4UDPSendPacketLen = 1252;
constexpr uint64_t kDefaultV6UDPSendPacketLen = 1232;
constexpr uint16_t kDefaultUDPSendPacketLen =
    (kDefaultV4UDPSendPacketLen < kDefaultV6UDPSendPacketLen
         ? kDefaultV4UDPSendPacketLen
         : kDefaultV6UDPSendPacketLen);
constexpr std::chrono::microseconds kDefaultInitialRtt = 50000us;
constexpr uint64_t kInitCwndInMss = 10;
constexpr uint64_t kMinCwndInMss = 2;
constexpr uint64_t kDefaultMaxCwndInMss = 2000;
constexpr float kDefaultCubicReductionFactor = 0.7f;
} // namespace quic
