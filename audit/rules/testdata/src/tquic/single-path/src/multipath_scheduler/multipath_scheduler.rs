// Only the multipath scheduler activates further paths.
pub(crate) fn set_path_active(paths: &mut PathMap, path_id: usize) -> Result<()> {
    let path = paths.get_mut(path_id)?;
    path.set_active(true);
    Ok(())
}
