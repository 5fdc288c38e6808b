namespace quic {

void QuicClientTransport::onNetworkSwitch(
    std::unique_ptr<QuicAsyncUDPSocket> newSock) {
  if (socket_ && newSock) {
    auto sock = std::move(socket_);
    socket_ = nullptr;
    sock->close();
    socket_ = std::move(newSock);
    happyEyeballsSetUpSocket(*socket_, conn_->localAddress, conn_->peerAddress);
  }
}

} // namespace quic
