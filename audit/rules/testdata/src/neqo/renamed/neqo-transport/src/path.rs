// Paths::find_path renamed.
impl Paths {
    pub fn find_path_v2(&mut self, local: SocketAddr, remote: SocketAddr) -> PathRef {
        self.primary.clone()
    }
}
