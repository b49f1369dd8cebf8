/**
 * The version-2 payment forwarder and factory ABIs (src/chain/contracts/PaymentForwarderV2.sol), typed
 * for viem; test/chain/payment-forwarder.test.ts checks them against the compiled artifacts.
 */
/** PaymentForwarderV2's ABI as the artifact has it, typed (tests compare the two). */
export const paymentForwarderV2Abi = [
  {
    inputs: [],
    stateMutability: 'nonpayable',
    type: 'constructor',
  },
  {
    inputs: [],
    name: 'AlreadyInitialized',
    type: 'error',
  },
  {
    inputs: [],
    name: 'NativeTransferFailed',
    type: 'error',
  },
  {
    inputs: [],
    name: 'NotFactory',
    type: 'error',
  },
  {
    inputs: [],
    name: 'NotInitialized',
    type: 'error',
  },
  {
    inputs: [],
    name: 'ZeroSplit',
    type: 'error',
  },
  {
    inputs: [],
    name: 'factory',
    outputs: [
      {
        internalType: 'address',
        name: '',
        type: 'address',
      }
    ],
    stateMutability: 'view',
    type: 'function',
  },
  {
    inputs: [
      {
        internalType: 'address',
        name: 'split_',
        type: 'address',
      }
    ],
    name: 'initialize',
    outputs: [],
    stateMutability: 'nonpayable',
    type: 'function',
  },
  {
    inputs: [],
    name: 'split',
    outputs: [
      {
        internalType: 'address',
        name: '',
        type: 'address',
      }
    ],
    stateMutability: 'view',
    type: 'function',
  },
  {
    inputs: [
      {
        internalType: 'address',
        name: 'token',
        type: 'address',
      }
    ],
    name: 'sweep',
    outputs: [
      {
        internalType: 'uint256',
        name: 'amount',
        type: 'uint256',
      }
    ],
    stateMutability: 'nonpayable',
    type: 'function',
  },
  {
    inputs: [],
    name: 'sweepNative',
    outputs: [
      {
        internalType: 'uint256',
        name: 'amount',
        type: 'uint256',
      }
    ],
    stateMutability: 'nonpayable',
    type: 'function',
  },
  {
    stateMutability: 'payable',
    type: 'receive',
  }
] as const;

/** PaymentForwarderFactoryV2's ABI as the artifact has it, typed (tests compare the two). */
export const paymentForwarderFactoryV2Abi = [
  {
    inputs: [],
    stateMutability: 'nonpayable',
    type: 'constructor',
  },
  {
    inputs: [],
    name: 'ZeroSplit',
    type: 'error',
  },
  {
    anonymous: false,
    inputs: [
      {
        indexed: true,
        internalType: 'address',
        name: 'forwarder',
        type: 'address',
      },
      {
        indexed: true,
        internalType: 'address',
        name: 'split',
        type: 'address',
      },
      {
        indexed: true,
        internalType: 'address',
        name: 'token',
        type: 'address',
      },
      {
        indexed: false,
        internalType: 'uint256',
        name: 'amount',
        type: 'uint256',
      }
    ],
    name: 'Swept',
    type: 'event',
  },
  {
    inputs: [],
    name: 'NATIVE',
    outputs: [
      {
        internalType: 'address',
        name: '',
        type: 'address',
      }
    ],
    stateMutability: 'view',
    type: 'function',
  },
  {
    inputs: [],
    name: 'implementation',
    outputs: [
      {
        internalType: 'address',
        name: '',
        type: 'address',
      }
    ],
    stateMutability: 'view',
    type: 'function',
  },
  {
    inputs: [
      {
        internalType: 'address',
        name: 'split',
        type: 'address',
      },
      {
        internalType: 'bytes32',
        name: 'salt',
        type: 'bytes32',
      },
      {
        internalType: 'address',
        name: 'token',
        type: 'address',
      },
      {
        components: [
          {
            internalType: 'address',
            name: 'from',
            type: 'address',
          },
          {
            internalType: 'uint256',
            name: 'value',
            type: 'uint256',
          },
          {
            internalType: 'uint256',
            name: 'validAfter',
            type: 'uint256',
          },
          {
            internalType: 'uint256',
            name: 'validBefore',
            type: 'uint256',
          },
          {
            internalType: 'bytes32',
            name: 'nonce',
            type: 'bytes32',
          },
          {
            internalType: 'uint8',
            name: 'v',
            type: 'uint8',
          },
          {
            internalType: 'bytes32',
            name: 'r',
            type: 'bytes32',
          },
          {
            internalType: 'bytes32',
            name: 's',
            type: 'bytes32',
          }
        ],
        internalType: 'struct PaymentForwarderFactoryV2.Authorization',
        name: 'auth',
        type: 'tuple',
      }
    ],
    name: 'payAndSweep',
    outputs: [
      {
        internalType: 'address',
        name: 'forwarder',
        type: 'address',
      },
      {
        internalType: 'uint256',
        name: 'amount',
        type: 'uint256',
      }
    ],
    stateMutability: 'nonpayable',
    type: 'function',
  },
  {
    inputs: [
      {
        internalType: 'address',
        name: 'split',
        type: 'address',
      },
      {
        internalType: 'bytes32',
        name: 'salt',
        type: 'bytes32',
      }
    ],
    name: 'predict',
    outputs: [
      {
        internalType: 'address',
        name: '',
        type: 'address',
      }
    ],
    stateMutability: 'view',
    type: 'function',
  },
  {
    inputs: [
      {
        internalType: 'address',
        name: 'split',
        type: 'address',
      },
      {
        internalType: 'bytes32',
        name: 'salt',
        type: 'bytes32',
      },
      {
        internalType: 'address',
        name: 'token',
        type: 'address',
      }
    ],
    name: 'sweep',
    outputs: [
      {
        internalType: 'address',
        name: 'forwarder',
        type: 'address',
      },
      {
        internalType: 'uint256',
        name: 'amount',
        type: 'uint256',
      }
    ],
    stateMutability: 'nonpayable',
    type: 'function',
  },
  {
    inputs: [],
    name: 'version',
    outputs: [
      {
        internalType: 'uint256',
        name: '',
        type: 'uint256',
      }
    ],
    stateMutability: 'pure',
    type: 'function',
  }
] as const;

