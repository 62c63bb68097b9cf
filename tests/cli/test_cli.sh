#!/bin/sh
# Black-box checks of the envbox binary's shell: help, version, exit codes.
set -u
envbox="$1"
fail=0
check() { # check NAME EXPECTED_STATUS CMD...
    name="$1"; want="$2"; shift 2
    "$@" >/tmp/envbox-cli-test.out 2>&1
    got=$?
    if [ "$got" -ne "$want" ]; then
        echo "FAIL $name: exit $got, want $want"; cat /tmp/envbox-cli-test.out; fail=1
    else
        echo "ok   $name"
    fi
}
check "--help" 0 "$envbox" --help
check "--version" 0 "$envbox" --version
"$envbox" --version | grep -q '^envbox [0-9]' || { echo "FAIL version text"; fail=1; }
check "no command shows help, usage error" 2 "$envbox"
check "unknown command" 2 "$envbox" frobnicate
"$envbox" frobnicate 2>&1 | grep -q "unknown command 'frobnicate'" || { echo "FAIL unknown command is named"; fail=1; }
"$envbox" frobnicate 2>&1 | grep -q '^  delete ' || { echo "FAIL unknown command lists the commands"; fail=1; }
"$envbox" list extra 2>&1 | grep -q "not expected: extra" || { echo "FAIL an extra argument is not a command"; fail=1; }
check "unknown option" 2 "$envbox" --frobnicate
check "bad --color" 2 "$envbox" --color purple list
check "create --help" 0 "$envbox" create --help
"$envbox" --help | grep -q 'rollback' || { echo "FAIL help lists commands"; fail=1; }
"$envbox" --help | grep -q '^  pin  *Mark a generation of ENV known-good' || { echo "FAIL help lists pin"; fail=1; }
"$envbox" --help | grep -q '^  unpin  *Remove the pin of a generation' || { echo "FAIL help lists unpin"; fail=1; }
check "pin --help" 0 "$envbox" pin --help
"$envbox" pin --help | grep -q '^Usage: envbox pin \[OPTIONS\] ENV \[N\]' || { echo "FAIL pin --help usage"; fail=1; }
"$envbox" pin --help | grep -q 'N INT  *Generation number (default: the current one)' || { echo "FAIL pin --help N"; fail=1; }
check "unpin --help" 0 "$envbox" unpin --help
"$envbox" unpin --help | grep -q '^Usage: envbox unpin \[OPTIONS\] ENV N' || { echo "FAIL unpin --help usage"; fail=1; }
"$envbox" gc --help | grep -q 'the current one and pinned ones are always kept' || { echo "FAIL gc --help names pins"; fail=1; }
home=$(mktemp -d)
# Outside a project doctor checks only the machine (a project's unreachable index would be exit 1).
check "doctor" 0 "$envbox" --home "$home" --project "$home" doctor
"$envbox" --home "$home" --project "$home" doctor | grep -q '^store: ' || { echo "FAIL doctor reports the store"; fail=1; }
"$envbox" --home "$home" --project "$home" doctor --json | grep -q '^{"ok": true, ' || { echo "FAIL doctor --json"; fail=1; }
check "run --locked with --frozen is a usage error" 2 "$envbox" --home "$home" --project "$home" run --locked --frozen env -- true
check "diff without operands is a usage error" 2 "$envbox" --home "$home" diff
check "rollback --to needs a number" 2 "$envbox" --home "$home" --project "$home" rollback env --to abc
check "rollback --to takes digits only (+5)" 2 "$envbox" --home "$home" --project "$home" rollback env --to +5
check "rollback --to takes 1 or more" 2 "$envbox" --home "$home" --project "$home" rollback env --to 0
check "pin N must be a number" 2 "$envbox" --home "$home" --project "$home" pin env abc
check "unpin needs N" 2 "$envbox" --home "$home" --project "$home" unpin env
check "run of an environment with no manifest (a mistyped ENV)" 3 "$envbox" --home "$home" --project "$home" run nothere -- true
check "lock outside a project" 3 "$envbox" --home "$home" --project "$home" lock env
check "create --locked with --frozen is a usage error" 2 "$envbox" --home "$home" --project "$home" create env --locked --frozen
check "a malformed ENVBOX_CUDA_DRIVER is a usage error" 2 env ENVBOX_CUDA_DRIVER=550. "$envbox" --home "$home" doctor
env ENVBOX_CUDA_DRIVER=550.54.15 "$envbox" --home "$home" --project "$home" doctor | grep -q '^NVIDIA driver: 550.54.15 (from ENVBOX_CUDA_DRIVER), runs CUDA 12.x$' || { echo "FAIL doctor names ENVBOX_CUDA_DRIVER as the driver's source"; fail=1; }
env ENVBOX_CUDA_DRIVER=550.54.15 "$envbox" --home "$home" --project "$home" doctor --json | grep -q '"driver": "550.54.15", "driver_source": "ENVBOX_CUDA_DRIVER"' || { echo "FAIL doctor --json driver_source"; fail=1; }
check "run --sandbox takes auto, strict or off" 2 "$envbox" --home "$home" --project "$home" run --sandbox maybe env true
check "run's unknown option before the command" 2 "$envbox" --home "$home" --project "$home" run env --frobnicate true
check "run's -V after the command is the command's" 3 "$envbox" --home "$home" --project "$home" run nothere python -V
"$envbox" --home "$home" --project "$home" doctor | grep -q '^run sandbox: ' || { echo "FAIL doctor reports the sandbox"; fail=1; }
check "init --cuda takes 12.8, 13.0 or none" 2 "$envbox" --home "$home" --project "$home" init env --cuda 11.8
check "init --platform takes a platform tag the manifest reads" 2 "$envbox" --home "$home" --project "$home" init env --platform macosx_11_0_arm64
[ ! -e "$home/manifests/env.toml" ] && [ ! -e "$home/.gitattributes" ] || { echo "FAIL init with a bad --platform wrote something"; fail=1; }
"$envbox" init --help | grep -q -- '--platform TEXT  *Platform tag to lock for (default: manylinux_2_28_ARCH' || { echo "FAIL init --help names --platform"; fail=1; }
check "verify without ENV outside a project is a usage error" 2 "$envbox" --home "$home" --project "$home" verify
check "export --format takes requirements-txt or pylock" 2 "$envbox" --home "$home" --project "$home" export env --format conda
check "export without a lock" 3 "$envbox" --home "$home" --project "$home" export env
check "delete of an environment with no manifest" 3 "$envbox" --home "$home" --project "$home" delete nothere
check "shell of an environment with no manifest" 3 "$envbox" --home "$home" --project "$home" shell nothere </dev/null
check "shell --sandbox takes auto, strict or off" 2 "$envbox" --home "$home" --project "$home" shell env --sandbox maybe
check "completion bash" 0 "$envbox" completion bash
bash -c "source <(\"$envbox\" completion bash) && complete -p envbox" | grep -q '_envbox envbox' || { echo "FAIL bash completion registers"; fail=1; }
check "completion of an unknown shell" 2 "$envbox" completion tcsh
rm -rf "$home"
exit $fail
