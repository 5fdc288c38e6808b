// Connection::migrate renamed.
impl Connection {
    fn switch_path(&mut self, now: Instant, remote: SocketAddr) {
        self.path.remote = remote;
    }
}
