namespace quic {

void QuicClientTransportLite::onNetworkSwitch(
    std::unique_ptr<QuicAsyncUDPSocket> newSock) {
  auto probePathId = startPathProbe(std::move(newSock));
  auto migrateResult = migrateConnection(probePathId.value());
}

quic::Expected<PathIdType, QuicError> QuicClientTransportLite::startPathProbe(
    std::unique_ptr<QuicAsyncUDPSocket> probeSocket) {
  if (!clientConn_->peerSupportsActiveConnectionMigration) {
    return quic::make_unexpected(QuicError(LocalErrorCode::INVALID_OPERATION));
  }
  return conn_->pathManager->addPath(std::move(probeSocket));
}

quic::Expected<void, QuicError> QuicClientTransportLite::migrateConnection(
    PathIdType pathId) {
  auto switchPathResult = conn_->pathManager->switchCurrentPath(pathId);
  socket_ = std::move(switchPathResult.value());
  conn_->pendingEvents.sendPing = true;
  return {};
}

} // namespace quic
