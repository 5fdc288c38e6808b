namespace quic {
uint64_t boundedCwnd(
    uint64_t cwndBytes,
    uint64_t packetLength,
    uint64_t maxCwndInMss,
    uint64_t minCwndInMss) noexcept {
  return std::max(
      std::min(cwndBytes, maxCwndInMss * packetLength),
      minCwndInMss * packetLength);
}
} // namespace quic
