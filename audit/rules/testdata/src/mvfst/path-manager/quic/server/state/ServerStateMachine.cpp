// The server's side of a migration (the shape of mvfst since QuicPathManager).
namespace quic {

bool maybeNATRebinding(
    const folly::SocketAddress& newPeerAddress,
    const folly::SocketAddress& oldPeerAddress) {
  auto& newIPAddr = newPeerAddress.getIPAddress();
  auto& oldIPAddr = oldPeerAddress.getIPAddress();
  if (newIPAddr == oldIPAddr) {
    return true;
  }
  return newIPAddr.isV4() && oldIPAddr.isV4() &&
      newIPAddr.inSubnet(oldIPAddr, 24);
}

quic::Expected<void, QuicError> onConnectionMigration(
    QuicServerConnectionState& conn,
    PathIdType readPathId,
    bool isIntentional) {
  auto* readPath = conn.pathManager->getPath(readPathId);
  auto* connPath = conn.pathManager->getPath(conn.currentPathId);
  bool isNATRebinding =
      maybeNATRebinding(readPath->peerAddress, connPath->peerAddress);
  auto prevPathCCType = conn.congestionController->type();
  if (!isNATRebinding) {
    conn.pathManager->cacheCurrentCongestionAndRttState();
  }
  auto switchPathRes = conn.pathManager->switchCurrentPath(readPathId);
  if (!isNATRebinding) {
    auto ccaRestored =
        conn.pathManager
            ->maybeRestoreCongestionControlAndRttStateForCurrentPath();
    if (!ccaRestored) {
      conn.congestionController =
          conn.congestionControllerFactory->makeCongestionController(
              conn, prevPathCCType);
    }
  }
  return {};
}

quic::Expected<void, QuicError> onServerReadDataFromOpen(
    QuicServerConnectionState& conn,
    ServerEvents::ReadData& readData) {
  bool migrationDenied = conn.transportSettings.disableMigration;
  if (!migrationDenied && readPath.id != conn.currentPathId) {
    auto res = onConnectionMigration(conn, readPath.id, false);
  }
  return {};
}

} // namespace quic
