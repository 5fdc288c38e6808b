// shape of quinn's Rebind before 0.11: swap the socket, ping every connection
impl Endpoint {
    pub fn rebind(&self, socket: std::net::UdpSocket) -> io::Result<()> {
        let socket = self.runtime.wrap_udp_socket(socket)?;
        let mut inner = self.inner.state.lock().unwrap();
        inner.socket = socket;
        for sender in inner.connections.senders.values() {
            let _ = sender.send(ConnectionEvent::Ping);
        }
        Ok(())
    }
}
