namespace quic {

void QuicPathManager::cacheCurrentCongestionAndRttState() {
  auto pathInfo = pathIdToInfo_.find(conn_.currentPathId);
  CachedCongestionControlAndRtt state;
  state.recordTime = Clock::now();
  state.congestionController = std::move(conn_.congestionController);
  state.srtt = conn_.lossState.srtt;
  pathInfo->second.cachedCCAndRttState = std::move(state);
}

bool QuicPathManager::maybeRestoreCongestionControlAndRttStateForCurrentPath() {
  auto& pathInfo = pathIdToInfo_.find(conn_.currentPathId)->second;
  auto& cachedState = pathInfo.cachedCCAndRttState;
  bool ccaRestored = false;
  if (pathInfo.status == PathStatus::Validated && cachedState.has_value() &&
      (Clock::now() - cachedState->recordTime <=
       kTimeToRetainLastCongestionAndRttState)) {
    conn_.congestionController = std::move(cachedState->congestionController);
    ccaRestored = true;
    conn_.lossState.srtt = cachedState->srtt;
  } else {
    if (pathInfo.rttSample) {
      auto rttSample = pathInfo.rttSample.value();
      conn_.lossState.srtt = rttSample;
      conn_.lossState.mrtt = rttSample;
    }
    // If we don't have a valid RTT sample, leave the current state as-is.
  }
  cachedState.reset();
  return ccaRestored;
}

const PathInfo* QuicPathManager::onPathResponseReceived(
    const PathResponseFrame& pathResponse,
    PathIdType pathId) {
  auto& path = pathIdToInfo_.find(pathId)->second;
  path.status = PathStatus::Validated;
  path.pathValidationTime = Clock::now();
  path.rttSample = std::chrono::duration_cast<std::chrono::microseconds>(
      *path.pathValidationTime - path.lastChallengeSentTimestamp);
  return &path;
}

quic::Expected<std::unique_ptr<QuicAsyncUDPSocket>, QuicError>
QuicPathManager::switchCurrentPath(PathIdType switchToPathId) {
  auto& switchToPath = pathIdToInfo_.find(switchToPathId)->second;
  conn_.currentPathId = switchToPath.id;
  conn_.peerAddress = switchToPath.peerAddress;
  return std::move(switchToPath.socket);
}

} // namespace quic
