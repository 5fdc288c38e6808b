impl Connection {
    fn input(&mut self, d: &Datagram, received: Instant, now: Instant) {
        let path = self.paths.find_path(d.destination(), d.source(), self.conn_params.get_cc_algorithm(), now);
        self.input_path(&path, d, received);
    }

    pub fn migrate(&mut self, local: Option<SocketAddr>, remote: Option<SocketAddr>, force: bool, now: Instant) -> Res<()> {
        if self.role != Role::Client {
            return Err(Error::InvalidMigration);
        }
        let path = self.paths.find_path(local, remote, self.conn_params.get_cc_algorithm(), now);
        self.ensure_permanent(&path)?;
        Ok(())
    }

    fn handle_migration(&mut self, path: &PathRef, d: &Datagram, migrate: bool, now: Instant) {
        if self.role == Role::Client {
            return;
        }
        self.paths.handle_migration(path, d.source(), now);
    }
}
