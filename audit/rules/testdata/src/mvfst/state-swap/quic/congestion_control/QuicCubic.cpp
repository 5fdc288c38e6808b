namespace quic {

Cubic::Cubic(
    QuicConnectionStateBase& conn,
    uint64_t initCwndBytes,
    uint64_t initSsthresh)
    : conn_(conn), ssthresh_(initSsthresh) {
  cwndBytes_ = std::min(
      conn.transportSettings.maxCwndInMss * conn.udpSendPacketLen,
      std::max(
          initCwndBytes,
          conn.transportSettings.initCwndInMss * conn.udpSendPacketLen));
}

void Cubic::cubicReduction(TimePoint lossTime) {
  cwndBytes_ = boundedCwnd(
      cwndBytes_ * steadyState_.reductionFactor,
      conn_.udpSendPacketLen,
      conn_.transportSettings.maxCwndInMss,
      conn_.transportSettings.minCwndInMss);
}

} // namespace quic
