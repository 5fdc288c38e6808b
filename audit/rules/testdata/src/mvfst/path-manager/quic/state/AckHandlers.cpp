namespace quic {

void updateRttForLargestAckedPacket(
    AckEvent& ackEvent,
    QuicConnectionStateBase& conn,
    OutstandingPacketWrapper& packet,
    const ReadAckFrame& frame,
    const TimePoint& ackReceiveTime) {
  auto rttSample = std::chrono::duration_cast<std::chrono::microseconds>(
      ackReceiveTime - packet.metadata.time);
  if (rttSample != rttSample.zero()) {
    updateRtt(conn, rttSample, frame.ackDelay);
  }
}

} // namespace quic
