# Bash completion for sluice, generated from its command table by
# `sluice --generate bash`. Use: source this file, or copy it to
# /usr/share/bash-completion/completions/sluice.

_sluice_commands="stream topic partition segment message consumer-group consumer-offset user pat client cluster ping me stats snapshot options context login logout"
_sluice_go="--server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
_sluice_gv="--server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate"

_sluice_cmd() {
    case "$1" in
    stream | s) echo "stream" ;;
    topic | t) echo "topic" ;;
    partition | p) echo "partition" ;;
    segment | seg) echo "segment" ;;
    message | m) echo "message" ;;
    consumer-group | g) echo "consumer-group" ;;
    consumer-offset | o) echo "consumer-offset" ;;
    user | u) echo "user" ;;
    pat) echo "pat" ;;
    client | c) echo "client" ;;
    cluster | cl) echo "cluster" ;;
    ping) echo "ping" ;;
    me) echo "me" ;;
    stats) echo "stats" ;;
    snapshot) echo "snapshot" ;;
    options) echo "options" ;;
    context | ctx) echo "context" ;;
    login | li) echo "login" ;;
    logout | lo) echo "logout" ;;
    esac
}

_sluice_sub() {
    case "$1 $2" in
    "stream create" | "stream c") echo "create" ;;
    "stream delete" | "stream d") echo "delete" ;;
    "stream update" | "stream u") echo "update" ;;
    "stream get" | "stream g") echo "get" ;;
    "stream list" | "stream l") echo "list" ;;
    "stream purge" | "stream p") echo "purge" ;;
    "topic create" | "topic c") echo "create" ;;
    "topic delete" | "topic d") echo "delete" ;;
    "topic update" | "topic u") echo "update" ;;
    "topic get" | "topic g") echo "get" ;;
    "topic list" | "topic l") echo "list" ;;
    "topic purge" | "topic p") echo "purge" ;;
    "partition create" | "partition c") echo "create" ;;
    "partition delete" | "partition d") echo "delete" ;;
    "partition list" | "partition l") echo "list" ;;
    "segment delete" | "segment d") echo "delete" ;;
    "message send" | "message s") echo "send" ;;
    "message poll" | "message p") echo "poll" ;;
    "message flush" | "message f") echo "flush" ;;
    "consumer-group create" | "consumer-group c") echo "create" ;;
    "consumer-group delete" | "consumer-group d") echo "delete" ;;
    "consumer-group get" | "consumer-group g") echo "get" ;;
    "consumer-group list" | "consumer-group l") echo "list" ;;
    "consumer-offset get" | "consumer-offset g") echo "get" ;;
    "consumer-offset set" | "consumer-offset s") echo "set" ;;
    "consumer-offset delete" | "consumer-offset d") echo "delete" ;;
    "user create" | "user c") echo "create" ;;
    "user delete" | "user d") echo "delete" ;;
    "user get" | "user g") echo "get" ;;
    "user list" | "user l") echo "list" ;;
    "user name" | "user n") echo "name" ;;
    "user status" | "user s") echo "status" ;;
    "user password" | "user pwd") echo "password" ;;
    "user permissions" | "user p") echo "permissions" ;;
    "pat create" | "pat c") echo "create" ;;
    "pat delete" | "pat d") echo "delete" ;;
    "pat list" | "pat l") echo "list" ;;
    "client get" | "client g") echo "get" ;;
    "client list" | "client l") echo "list" ;;
    "cluster metadata" | "cluster m") echo "metadata" ;;
    "context list" | "context l") echo "list" ;;
    "context use" | "context u") echo "use" ;;
    esac
}

_sluice_subs() {
    case "$1" in
    stream) echo "create delete update get list purge" ;;
    topic) echo "create delete update get list purge" ;;
    partition) echo "create delete list" ;;
    segment) echo "delete" ;;
    message) echo "send poll flush" ;;
    consumer-group) echo "create delete get list" ;;
    consumer-offset) echo "get set delete" ;;
    user) echo "create delete get list name status password permissions" ;;
    pat) echo "create delete list" ;;
    client) echo "get list" ;;
    cluster) echo "metadata" ;;
    context) echo "list use" ;;
    esac
}

_sluice_opts() {
    case "$1" in
    "stream create")
        _sluice_o=" --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v=" --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "stream delete")
        _sluice_o=" --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v=" --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "stream update")
        _sluice_o=" --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v=" --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "stream get")
        _sluice_o=" --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v=" --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "stream list")
        _sluice_o="--list-mode -l --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v="--list-mode -l --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "stream purge")
        _sluice_o=" --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v=" --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "topic create")
        _sluice_o="--max-topic-size -m --replication-factor -r --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v="--max-topic-size -m --replication-factor -r --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "topic delete")
        _sluice_o=" --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v=" --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "topic update")
        _sluice_o="--max-topic-size -m --replication-factor -r --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v="--max-topic-size -m --replication-factor -r --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "topic get")
        _sluice_o=" --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v=" --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "topic list")
        _sluice_o="--list-mode -l --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v="--list-mode -l --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "topic purge")
        _sluice_o=" --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v=" --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "partition create")
        _sluice_o=" --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v=" --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "partition delete")
        _sluice_o=" --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v=" --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "partition list")
        _sluice_o=" --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v=" --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "segment delete")
        _sluice_o=" --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v=" --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "message send")
        _sluice_o="--partition-id -p --key --message-key -m --balanced -b --header --headers -H --batch-size --input-file --file-format --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v="--partition-id -p --key --message-key -m --header --headers -H --batch-size --input-file --file-format --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password --token -t --context --output -o --generate" ;;
    "message poll")
        _sluice_o="--offset -o --first -f --last -l --next -n --timestamp --count --message-count -m --consumer -c --kind --consumer-kind -k --auto-commit -a --show-headers -s --follow -F --follow-seconds --interval-ms --output-file --file-format --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output --quiet -q --help -h --version -V --generate"
        _sluice_v="--offset -o --timestamp --count --message-count -m --consumer -c --kind --consumer-kind -k --follow-seconds --interval-ms --output-file --file-format --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output --generate" ;;
    "message flush")
        _sluice_o="--fsync -f --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v=" --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "consumer-group create")
        _sluice_o=" --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v=" --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "consumer-group delete")
        _sluice_o=" --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v=" --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "consumer-group get")
        _sluice_o=" --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v=" --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "consumer-group list")
        _sluice_o="--list-mode -l --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v="--list-mode -l --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "consumer-offset get")
        _sluice_o="--kind -k --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v="--kind -k --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "consumer-offset set")
        _sluice_o="--kind -k --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v="--kind -k --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "consumer-offset delete")
        _sluice_o="--kind -k --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v="--kind -k --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "user create")
        _sluice_o="--user-status -u --global-permissions -g --stream-permissions -s --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v="--user-status -u --global-permissions -g --stream-permissions -s --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username --password -p --token -t --context --output -o --generate" ;;
    "user delete")
        _sluice_o=" --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v=" --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "user get")
        _sluice_o=" --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v=" --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "user list")
        _sluice_o="--list-mode -l --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v="--list-mode -l --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "user name")
        _sluice_o=" --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v=" --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "user status")
        _sluice_o=" --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v=" --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "user password")
        _sluice_o=" --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v=" --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "user permissions")
        _sluice_o="--global-permissions -g --stream-permissions -s --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v="--global-permissions -g --stream-permissions -s --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "pat create")
        _sluice_o=" --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v=" --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "pat delete")
        _sluice_o=" --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v=" --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "pat list")
        _sluice_o="--list-mode -l --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v="--list-mode -l --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "client get")
        _sluice_o=" --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v=" --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "client list")
        _sluice_o="--list-mode -l --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v="--list-mode -l --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "cluster metadata")
        _sluice_o="--list-mode -l --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v="--list-mode -l --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "ping")
        _sluice_o="--count -c --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v="--count -c --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "me")
        _sluice_o=" --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v=" --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "stats")
        _sluice_o=" --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v=" --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "snapshot")
        _sluice_o="--compression -c --snapshot-types -s --out-dir -o --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output --quiet -q --help -h --version -V --generate"
        _sluice_v="--compression -c --snapshot-types -s --out-dir -o --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output --generate" ;;
    "options")
        _sluice_o=" --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v=" --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "context list")
        _sluice_o="--list-mode -l --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v="--list-mode -l --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "context use")
        _sluice_o=" --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v=" --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "login")
        _sluice_o=" --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v=" --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    "logout")
        _sluice_o=" --server --tcp-server-address --transport --tls --tcp-tls-enabled --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --tls-insecure --username -u --password -p --token -t --context --output -o --quiet -q --help -h --version -V --generate"
        _sluice_v=" --server --tcp-server-address --transport --tls-domain --tcp-tls-domain --tls-ca-file --tcp-tls-ca-file --username -u --password -p --token -t --context --output -o --generate" ;;
    *)
        _sluice_o=$_sluice_go
        _sluice_v=$_sluice_gv ;;
    esac
}

_sluice_choices() {
    case "$1 $2" in
    "stream list --list-mode" | "stream list -l") echo "table list" ;;
    "topic create --max-topic-size" | "topic create -m") ;;
    "topic create --replication-factor" | "topic create -r") ;;
    "topic update --max-topic-size" | "topic update -m") ;;
    "topic update --replication-factor" | "topic update -r") ;;
    "topic list --list-mode" | "topic list -l") echo "table list" ;;
    "message send --partition-id" | "message send -p") ;;
    "message send --key" | "message send --message-key" | "message send -m") ;;
    "message send --header" | "message send --headers" | "message send -H") ;;
    "message send --batch-size") ;;
    "message send --input-file") ;;
    "message send --file-format") echo "binary lines" ;;
    "message poll --offset" | "message poll -o") ;;
    "message poll --timestamp") ;;
    "message poll --count" | "message poll --message-count" | "message poll -m") ;;
    "message poll --consumer" | "message poll -c") ;;
    "message poll --kind" | "message poll --consumer-kind" | "message poll -k") echo "consumer consumer-group" ;;
    "message poll --follow-seconds") ;;
    "message poll --interval-ms") ;;
    "message poll --output-file") ;;
    "message poll --file-format") echo "binary lines" ;;
    "consumer-group list --list-mode" | "consumer-group list -l") echo "table list" ;;
    "consumer-offset get --kind" | "consumer-offset get -k") echo "consumer consumer-group" ;;
    "consumer-offset set --kind" | "consumer-offset set -k") echo "consumer consumer-group" ;;
    "consumer-offset delete --kind" | "consumer-offset delete -k") echo "consumer consumer-group" ;;
    "user create --user-status" | "user create -u") echo "active inactive" ;;
    "user create --global-permissions" | "user create -g") ;;
    "user create --stream-permissions" | "user create -s") ;;
    "user list --list-mode" | "user list -l") echo "table list" ;;
    "user permissions --global-permissions" | "user permissions -g") ;;
    "user permissions --stream-permissions" | "user permissions -s") ;;
    "pat list --list-mode" | "pat list -l") echo "table list" ;;
    "client list --list-mode" | "client list -l") echo "table list" ;;
    "cluster metadata --list-mode" | "cluster metadata -l") echo "table list" ;;
    "ping --count" | "ping -c") ;;
    "snapshot --compression" | "snapshot -c") echo "stored deflated bzip2 zstd lzma xz" ;;
    "snapshot --snapshot-types" | "snapshot -s") ;;
    "snapshot --out-dir" | "snapshot -o") ;;
    "context list --list-mode" | "context list -l") echo "table list" ;;
    *" --transport") echo "tcp websocket" ;;
    *" --output" | *" -o") echo "table json list" ;;
    *" --generate") echo "bash markdown" ;;
    esac
}

_sluice_args() {
    case "$1 $2" in
    "topic create 3") echo "none gzip" ;;
    "topic update 3") echo "none gzip" ;;
    "user status 1") echo "active inactive" ;;
    "options 0") echo "topic stream user" ;;
    esac
}

_sluice_takes_value() {
    _sluice_opts "$1"
    [[ " $_sluice_v " == *" $2 "* ]]
}

_sluice() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
    local cmd="" sub="" path="" npos=0 i w
    COMPREPLY=()
    for ((i = 1; i < COMP_CWORD; i++)); do
        w=${COMP_WORDS[i]}
        if [[ $w == -* ]]; then
            if [[ $w != *=* ]] && _sluice_takes_value "$path" "$w"; then
                ((i++))
            fi
        elif [[ -z $cmd ]]; then
            cmd=$(_sluice_cmd "$w")
            path=$cmd
            [[ -n $cmd && -z $(_sluice_subs "$cmd") ]] && sub=.
        elif [[ -z $sub ]]; then
            sub=$(_sluice_sub "$cmd" "$w")
            [[ -n $sub ]] && path="$cmd $sub"
        else
            ((npos++))
        fi
    done
    if [[ $COMP_CWORD -gt 1 && $prev == -* && $prev != *=* ]] &&
        _sluice_takes_value "$path" "$prev"; then
        COMPREPLY=($(compgen -W "$(_sluice_choices "$path" "$prev")" -- "$cur"))
        return
    fi
    if [[ $cur == -* ]]; then
        _sluice_opts "$path"
        COMPREPLY=($(compgen -W "$_sluice_o" -- "$cur"))
    elif [[ -z $cmd ]]; then
        COMPREPLY=($(compgen -W "$_sluice_commands" -- "$cur"))
    elif [[ -z $sub ]]; then
        COMPREPLY=($(compgen -W "$(_sluice_subs "$cmd")" -- "$cur"))
    else
        COMPREPLY=($(compgen -W "$(_sluice_args "$path" "$npos")" -- "$cur"))
    fi
}

complete -o default -F _sluice sluice
