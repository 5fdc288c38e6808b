const MAX_SEND_UDP_PAYLOAD_SIZE: usize = 1200;

const DEFAULT_INITIAL_CONGESTION_WINDOW_PACKETS: usize = 10;

pub struct Config {
    cc_algorithm: CongestionControlAlgorithm,
}

impl Config {
    pub fn with_boring_ssl_ctx_builder(version: u32) -> Result<Config> {
        Ok(Config {
            cc_algorithm: CongestionControlAlgorithm::CUBIC,
        })
    }
}

pub struct Connection<F = DefaultBufFactory> {
    paths: path::PathMap,
    recovery_config: recovery::RecoveryConfig,
}

impl<F: BufFactory> Connection<F> {
    fn new(local: SocketAddr, peer: SocketAddr, config: &Config) -> Result<Self> {
        let mut path = path::Path::new(local, peer, &recovery_config, true);
        Ok(conn)
    }

    fn get_or_create_recv_path_id(&mut self, info: &RecvInfo) -> Result<usize> {
        let mut path = path::Path::new(info.to, info.from, &self.recovery_config, false);
        self.paths.insert_path(path, self.is_server)
    }
}
