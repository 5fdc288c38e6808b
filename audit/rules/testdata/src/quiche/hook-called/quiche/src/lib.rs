const MAX_SEND_UDP_PAYLOAD_SIZE: usize = 1200;

pub struct Connection {
    recovery: recovery::Recovery,
}

impl Connection {
    fn on_peer_migrated(&mut self) {
        self.recovery.on_connection_migration();
    }
}
