/* a variant: validation samples RTT; the setter switches through QuicPathSetActive */
void
QuicPathSetValid(
    _In_ QUIC_CONNECTION* Connection,
    _In_ QUIC_PATH* Path,
    _In_ QUIC_PATH_VALID_REASON Reason
    )
{
    Path->IsPeerValidated = TRUE;
    QuicConnUpdateRtt(Connection, Path, CxPlatTimeDiff32(Path->ChallengeSent, Now));
}

void
QuicPathSetActive(
    _In_ QUIC_CONNECTION* Connection,
    _In_ QUIC_PATH* Path
    )
{
    QuicCongestionControlReset(&Connection->CongestionControl, FALSE);
}
