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
    PathIdType pathId,
    bool resetCongestionControllerAndRtt) {
  auto prevPathCCType = conn_->congestionController->type();
  auto switchPathResult = conn_->pathManager->switchCurrentPath(pathId);
  if (resetCongestionControllerAndRtt) {
    conn_->congestionController =
        conn_->congestionControllerFactory->makeCongestionController(
            *conn_, prevPathCCType);
    // Use the probe's RTT sample if available,
    // otherwise leave RTT as-is so PTO timeouts remain functional.
    auto* pathInfo = conn_->pathManager->getPath(pathId);
    if (pathInfo && pathInfo->rttSample) {
      auto rttSample = pathInfo->rttSample.value();
      conn_->lossState.srtt = rttSample;
    }
  }
  socket_ = std::move(switchPathResult.value());
  return {};
}

} // namespace quic
