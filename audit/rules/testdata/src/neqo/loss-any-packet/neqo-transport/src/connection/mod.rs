impl Connection {
    pub fn migrate(&mut self, local: Option<SocketAddr>, remote: Option<SocketAddr>, now: Instant) -> Res<()> {
        let path = self.paths.find_path(local, remote, &self.conn_params, now);
        self.ensure_permanent(&path, now)?;
        self.loss_recovery.migrate();
        Ok(())
    }

    fn handle_migration(&mut self, path: &PathRef, d: &Datagram, migrate: bool, now: Instant) {
        if self.role == Role::Client {
            return;
        }
        if migrate {
            self.paths.migrate(path, true, now);
        }
    }

    fn input_frame(&mut self, path: &PathRef, frame: Frame, now: Instant) -> Res<()> {
        match frame {
            Frame::PathResponse { data } => {
                if self.paths.path_response(data, now) {
                    self.loss_recovery.migrate();
                }
            }
            _ => {}
        }
        Ok(())
    }
}
