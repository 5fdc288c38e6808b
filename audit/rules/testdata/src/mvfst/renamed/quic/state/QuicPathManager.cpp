// The restore helper renamed.
namespace quic {
void QuicPathManager::restoreStateV2(PathIdType pathId) {
  conn_.lossState.srtt = 0us;
}
} // namespace quic
