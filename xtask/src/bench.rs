pub(crate) fn run(_args: &[String]) -> anyhow::Result<()> { anyhow::bail!("todo") }
