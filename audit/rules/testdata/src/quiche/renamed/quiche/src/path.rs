// Path::new renamed.
impl Path {
    pub fn with_addrs(local_addr: SocketAddr, peer_addr: SocketAddr) -> Path {
        Path { local_addr, peer_addr }
    }
}
