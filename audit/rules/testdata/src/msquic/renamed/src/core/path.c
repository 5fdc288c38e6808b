/* QuicPathSetActive renamed */
void
QuicPathSetActiveV2(QUIC_CONNECTION* Connection, QUIC_PATH* Path)
{
    Connection->Paths[0] = *Path;
}
