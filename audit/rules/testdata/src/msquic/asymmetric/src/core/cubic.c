#define TEN_TIMES_BETA_CUBIC 7

void
CubicCongestionControlInitialize(
    _In_ QUIC_CONGESTION_CONTROL* Cc,
    _In_ const QUIC_SETTINGS_INTERNAL* Settings
    )
{
    const uint16_t DatagramPayloadLength =
        QuicPathGetDatagramPayloadSize(&Connection->Paths[0]);
    Cubic->CongestionWindow = DatagramPayloadLength * Cubic->InitialWindowPackets;
}
