// The loss-recovery type under a name the rule does not know: its methods
// exist, so the reason must be the type, not "function absent".
pub struct Recovery {
    spaces: LossRecoverySpaces,
}

impl Recovery {
    pub fn migrate(&mut self) {
        for space in self.spaces.iter_mut() {
            space.migrate();
        }
    }

    pub fn on_ack_received(&mut self, primary_path: &PathRef, pn_space: PacketNumberSpace) {
        self.spaces.get_mut(pn_space);
    }
}
