pragma circom 2.0.0;

// A leaf's inclusion in a binary Poseidon Merkle tree, built from
// circomlib's own templates (npm `circomlib`): the root is the output.
include "circomlib/circuits/poseidon.circom";
include "circomlib/circuits/switcher.circom";

template MerkleInclusion(depth) {
    signal input leaf;
    signal input siblings[depth];
    // 0: the path's node is the left child at that level.
    signal input path[depth];
    signal output root;

    component order[depth];
    component hash[depth];
    signal node[depth + 1];
    node[0] <== leaf;
    for (var i = 0; i < depth; i++) {
        path[i] * (1 - path[i]) === 0;
        order[i] = Switcher();
        order[i].sel <== path[i];
        order[i].L <== node[i];
        order[i].R <== siblings[i];
        hash[i] = Poseidon(2);
        hash[i].inputs[0] <== order[i].outL;
        hash[i].inputs[1] <== order[i].outR;
        node[i + 1] <== hash[i].out;
    }
    root <== node[depth];
}

component main {public [leaf]} = MerkleInclusion(3);
