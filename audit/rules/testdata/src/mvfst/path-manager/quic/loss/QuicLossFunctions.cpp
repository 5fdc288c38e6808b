namespace quic {
void markPacketLoss(QuicConnectionStateBase& conn, OutstandingPacketWrapper& pkt) {
  lossVisitor(conn, pkt.metadata.pathId, pkt.packet, false);
}
} // namespace quic
