pragma circom 2.0.0;

// Many public signals: 40 public inputs and 40 outputs, each output
// y_i = x_i * k + i for a private k.
template ManyPublic(n) {
    signal input xs[n];
    signal input k;
    signal output ys[n];
    for (var i = 0; i < n; i++) {
        ys[i] <== xs[i] * k + i;
    }
}

component main {public [xs]} = ManyPublic(40);
