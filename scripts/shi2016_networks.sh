# The seven networks of Shi et al. 2016 as models/shi2016.cc and models/shi2016_cnn.cc define them
# (kiln_write_models writes them as .kgraph files): names in the paper's order, the paper's batch
# sizes, and the feeds of a training step. Sourced by scripts/bench_shi2016.sh and
# scripts/bench_peers.sh.
# shellcheck shell=bash disable=SC2034
shi_networks=(fcn-s alexnet-s resnet-50 fcn-r alexnet-r resnet-56 lstm)
declare -A shi_batch=([fcn-s]=64 [alexnet-s]=16 [resnet-50]=16 [fcn-r]=1024 [alexnet-r]=1024
                      [resnet-56]=128 [lstm]=128)
# The input's shape after the batch dim (N), and the labels' where they have more dims than N.
declare -A shi_input=([fcn-s]=x=N:26752 [alexnet-s]=x=N:3x224x224 [resnet-50]=x=N:3x224x224
                      [fcn-r]=x=N:784 [alexnet-r]=x=N:3x32x32 [resnet-56]=x=N:3x32x32
                      [lstm]=tokens=N:32)
declare -A shi_labels=([lstm]=labels=N:32)
# The class count of each network's labels (and the LSTM's vocabulary: its tokens' bound).
declare -A shi_classes=([fcn-s]=26752 [alexnet-s]=1000 [resnet-50]=1000 [fcn-r]=10 [alexnet-r]=10
                        [resnet-56]=10 [lstm]=10000)

# "x=N:3x32x32" with N=16 -> "x=16x3x32x32"
shi_shape_flag() { local spec=$1 n=$2; echo "${spec%%=*}=${n}x${spec#*:}"; }

# The `kiln bench` --input flags of network $1 at batch $2 (one per line).
shi_input_flags() {
  local name=$1 n=$2 label_spec=${shi_labels[$1]:-labels=N:}
  echo "--input"
  shi_shape_flag "${shi_input[$name]}" "$n"
  echo "--input"
  if [[ $label_spec == *: ]]; then echo "labels=$n"; else shi_shape_flag "$label_spec" "$n"; fi
}
