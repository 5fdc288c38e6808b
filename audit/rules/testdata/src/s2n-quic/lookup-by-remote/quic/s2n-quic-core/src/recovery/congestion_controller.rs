// shape of PathInfo before path/mtu.rs: a new controller starts at the minimum UDP payload
impl<'a> PathInfo<'a> {
    pub fn new(remote_address: &'a SocketAddress) -> Self {
        Self {
            remote_address,
            application_protocol: None,
            max_datagram_size: MINIMUM_MTU,
        }
    }
}
