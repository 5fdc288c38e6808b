// shape of neqo's paths: a new Path gets a fresh sender, its RTT primed from the primary path
impl Paths {
    pub fn find_path(
        &self,
        local: SocketAddr,
        remote: SocketAddr,
        cc: CongestionControlAlgorithm,
        now: Instant,
    ) -> PathRef {
        self.paths
            .iter()
            .find_map(|p| {
                if p.borrow().received_on(local, remote) {
                    Some(Rc::clone(p))
                } else {
                    None
                }
            })
            .unwrap_or_else(|| {
                let mut p = Path::temporary(local, remote, cc, now);
                if let Some(primary) = self.primary.as_ref() {
                    p.prime_rtt(primary.borrow().rtt());
                }
                Rc::new(RefCell::new(p))
            })
    }

    pub fn path_response(&mut self, response: [u8; 8], now: Instant) -> bool {
        self.paths.iter().any(|p| p.borrow_mut().path_response(response, now))
    }
}

impl Path {
    pub fn temporary(local: SocketAddr, remote: SocketAddr, cc: CongestionControlAlgorithm, now: Instant) -> Self {
        let mut sender = PacketSender::new(cc, now);
        Self {
            local,
            remote,
            rtt: RttEstimate::default(),
            sender,
        }
    }

    fn received_on(&self, local: SocketAddr, remote: SocketAddr) -> bool {
        self.local == local && self.remote == remote
    }

    pub fn path_response(&mut self, response: [u8; 8], now: Instant) -> bool {
        self.validated = Some(now);
        true
    }
}
