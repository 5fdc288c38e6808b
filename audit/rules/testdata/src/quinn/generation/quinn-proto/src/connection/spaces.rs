// shape of quinn-proto's SentPacket at the pin
pub(super) struct SentPacket {
    pub(super) path_generation: u64,
    pub(super) size: u16,
}
