// The server's side of a migration before QuicPathManager: connection-wide
// state swapped in place.
namespace quic {
namespace {

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

CongestionAndRttState moveCurrentCongestionAndRttState(
    QuicServerConnectionState& conn) {
  CongestionAndRttState state;
  state.congestionController = std::move(conn.congestionController);
  state.srtt = conn.lossState.srtt;
  return state;
}

void resetCongestionAndRttState(QuicServerConnectionState& conn) {
  conn.congestionController =
      conn.congestionControllerFactory->makeCongestionController(
          conn, conn.transportSettings.defaultCongestionController);
  conn.lossState.srtt = 0us;
  conn.lossState.lrtt = 0us;
  conn.lossState.rttvar = 0us;
  conn.lossState.mrtt = kDefaultMinRtt;
}

void recoverOrResetCongestionAndRttState(
    QuicServerConnectionState& conn,
    const folly::SocketAddress& peerAddress) {
  auto& lastState = conn.migrationState.lastCongestionAndRtt;
  if (lastState && lastState->peerAddress == peerAddress &&
      (Clock::now() - lastState->recordTime <=
       kTimeToRetainLastCongestionAndRttState)) {
    conn.congestionController = std::move(lastState->congestionController);
    conn.lossState.srtt = lastState->srtt;
    conn.migrationState.lastCongestionAndRtt.reset();
  } else {
    resetCongestionAndRttState(conn);
  }
}

} // namespace

void onConnectionMigration(
    QuicServerConnectionState& conn,
    const folly::SocketAddress& newPeerAddress,
    bool isIntentional) {
  bool isNATRebinding = maybeNATRebinding(newPeerAddress, conn.peerAddress);
  if (!isNATRebinding) {
    CongestionAndRttState state = moveCurrentCongestionAndRttState(conn);
    recoverOrResetCongestionAndRttState(conn, newPeerAddress);
    conn.migrationState.lastCongestionAndRtt = std::move(state);
  }
  conn.peerAddress = newPeerAddress;
}

void onServerReadDataFromOpen(
    QuicServerConnectionState& conn,
    ServerEvents::ReadData& readData) {
  bool migrationDenied = conn.transportSettings.disableMigration;
  if (!migrationDenied && conn.peerAddress != readData.peer) {
    onConnectionMigration(conn, readData.peer, false);
  }
}

} // namespace quic
