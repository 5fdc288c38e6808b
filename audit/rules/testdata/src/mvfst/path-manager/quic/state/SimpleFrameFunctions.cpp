namespace quic {

bool updateSimpleFrameOnPacketReceived(
    QuicConnectionStateBase& conn,
    const QuicSimpleFrame& frame,
    PathIdType pathId) {
  switch (frame.type()) {
    case QuicSimpleFrame::Type::PathResponseFrame: {
      const PathResponseFrame& pathResponse = *frame.asPathResponseFrame();
      auto validatedPath =
          conn.pathManager->onPathResponseReceived(pathResponse, pathId);
      if (validatedPath && validatedPath->id == conn.currentPathId) {
        updateRtt(conn, validatedPath->rttSample.value(), 0us);
      }
      return false;
    }
    default:
      return false;
  }
}

} // namespace quic
