use clap::CommandFactory;

use super::Cli;

/// Every command and every argument of every command says what it is in `--help`.
#[test]
fn every_command_and_option_is_described() {
    fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
        let path = format!("{path} {}", cmd.get_name());
        if cmd.get_about().is_none() && cmd.get_long_about().is_none() {
            missing.push(path.clone());
        }
        for arg in cmd.get_arguments() {
            if arg.is_hide_set() || ["help", "version"].contains(&arg.get_id().as_str()) {
                continue;
            }
            if arg.get_help().is_none() && arg.get_long_help().is_none() {
                missing.push(format!("{path} --{}", arg.get_id()));
            }
        }
        for sub in cmd.get_subcommands() {
            walk(sub, &path, missing);
        }
    }
    let mut missing = Vec::new();
    walk(&Cli::command(), "", &mut missing);
    assert!(missing.is_empty(), "without help text: {missing:?}");
    Cli::command().debug_assert();
}
