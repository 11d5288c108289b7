pragma circom 2.0.0;

// A Merkle inclusion proof of depth 8 over a two-to-one compression of
// x^5 rounds; the path bits are private and constrained to be bits.
template Compress() {
    signal input l;
    signal input r;
    signal output out;
    signal s[6];
    signal s2[6];
    signal s4[6];
    for (var i = 0; i < 6; i++) {
        if (i == 0) {
            s[i] <== l + 2 * r + 17;
        } else {
            s[i] <== s4[i - 1] * s[i - 1] + r + i;
        }
        s2[i] <== s[i] * s[i];
        s4[i] <== s2[i] * s2[i];
    }
    out <== s4[5] * s[5];
}

template Select() {
    signal input a;
    signal input b;
    signal input bit;
    signal output l;
    signal output r;
    bit * (1 - bit) === 0;
    l <== a + bit * (b - a);
    r <== a + b - l;
}

template Merkle(depth) {
    signal input leaf;
    signal input siblings[depth];
    signal input bits[depth];
    signal output root;
    component sel[depth];
    component h[depth];
    for (var i = 0; i < depth; i++) {
        sel[i] = Select();
        sel[i].a <== i == 0 ? leaf : h[i - 1].out;
        sel[i].b <== siblings[i];
        sel[i].bit <== bits[i];
        h[i] = Compress();
        h[i].l <== sel[i].l;
        h[i].r <== sel[i].r;
    }
    root <== h[depth - 1].out;
}

component main {public [leaf]} = Merkle(8);
