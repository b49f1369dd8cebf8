// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import "@openzeppelin/contracts/proxy/Clones.sol";
import "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";

/// @notice EIP-3009's transfer, as Circle's USDC (FiatTokenV2) implements it.
interface IERC3009 {
    function transferWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external;
}

/// @title One receipt's payment address, version 2: forwards every token and native ETH it holds
/// to one split contract.
/// @notice Deployed only as an EIP-1167 clone by PaymentForwarderFactoryV2, which initializes it in
/// the same transaction. Anyone may sweep; the money can only ever go to `split`. ETH sent to the
/// address before the clone exists stays there (deploying code keeps an address's balance) and is
/// swept like ETH sent later. The implementation itself is never initialized, so every sweep on it
/// reverts.
contract PaymentForwarderV2 {
    using SafeERC20 for IERC20;

    /// @notice The factory that deploys the clones (an immutable, read through the implementation's code).
    address public immutable factory;
    /// @notice Where every balance goes; set once, by the factory, at deployment.
    address public split;

    error NotFactory();
    error AlreadyInitialized();
    error NotInitialized();
    error ZeroSplit();
    error NativeTransferFailed();

    constructor() {
        factory = msg.sender;
    }

    /// @notice Accepts plain ETH once a split is set (a clone, from its deployment on); the
    /// implementation, never initialized, refuses it so nothing can be stranded there.
    receive() external payable {
        if (split == address(0)) revert NotInitialized();
    }

    function initialize(address split_) external {
        if (msg.sender != factory) revert NotFactory();
        if (split != address(0)) revert AlreadyInitialized();
        if (split_ == address(0)) revert ZeroSplit();
        split = split_;
    }

    /// @notice Moves this address's whole balance of `token` to the split. Callable by anyone.
    function sweep(address token) external returns (uint256 amount) {
        address to = split;
        if (to == address(0)) revert NotInitialized();
        amount = IERC20(token).balanceOf(address(this));
        if (amount > 0) IERC20(token).safeTransfer(to, amount);
    }

    /// @notice Moves this address's whole ETH balance to the split (a PaymentSplitter accepts it in
    /// receive() and releases it with release(account)). Callable by anyone.
    function sweepNative() external returns (uint256 amount) {
        address to = split;
        if (to == address(0)) revert NotInitialized();
        amount = address(this).balance;
        if (amount > 0) {
            (bool ok, ) = to.call{value: amount}("");
            if (!ok) revert NativeTransferFailed();
        }
    }
}

/// @title Deploys version-2 payment forwarders at addresses known in advance, and sweeps them.
/// @notice The split is part of the CREATE2 salt, so an address predicted for split S can only
/// ever hold a forwarder to S: nobody, the service included, can redirect money paid there. No
/// owner, no upgrade, no state.
contract PaymentForwarderFactoryV2 {
    /// @notice The token argument that means native ETH.
    address public constant NATIVE = address(0);

    address public immutable implementation;

    /// @notice One sweep; `token` is NATIVE (the zero address) for ETH.
    event Swept(address indexed forwarder, address indexed split, address indexed token, uint256 amount);

    error ZeroSplit();

    constructor() {
        implementation = address(new PaymentForwarderV2());
    }

    /// @notice 2: this factory's forwarders sweep native ETH and it relays EIP-3009 authorizations.
    function version() external pure returns (uint256) {
        return 2;
    }

    function predict(address split, bytes32 salt) public view returns (address) {
        return Clones.predictDeterministicAddress(implementation, keccak256(abi.encode(split, salt)));
    }

    /// @notice Deploys the forwarder for (split, salt) if it is not there yet, then sweeps its
    /// balance of `token` (NATIVE for ETH) into the split. Callable by anyone; an empty sweep moves nothing.
    function sweep(address split, bytes32 salt, address token) public returns (address forwarder, uint256 amount) {
        forwarder = _deployed(split, salt);
        amount = token == NATIVE ? PaymentForwarderV2(payable(forwarder)).sweepNative() : PaymentForwarderV2(payable(forwarder)).sweep(token);
        emit Swept(forwarder, split, token, amount);
    }

    /// @notice An EIP-3009 TransferWithAuthorization signed by the payer; its `to` is implied (the forwarder).
    struct Authorization {
        address from;
        uint256 value;
        uint256 validAfter;
        uint256 validBefore;
        bytes32 nonce;
        uint8 v;
        bytes32 r;
        bytes32 s;
    }

    /// @notice Submits an EIP-3009 authorization that pays the forwarder for (split, salt), then
    /// sweeps the forwarder's whole balance of `token` into the split, in one transaction. The
    /// authorization's `to` is the forwarder: the token checks it against the signature, so the
    /// same authorization cannot pay any other address, whoever submits it.
    function payAndSweep(address split, bytes32 salt, address token, Authorization calldata auth)
        external
        returns (address forwarder, uint256 amount)
    {
        if (split == address(0)) revert ZeroSplit();
        _pay(token, predict(split, salt), auth);
        return sweep(split, salt, token);
    }

    function _pay(address token, address to, Authorization calldata auth) private {
        IERC3009(token).transferWithAuthorization(auth.from, to, auth.value, auth.validAfter, auth.validBefore, auth.nonce, auth.v, auth.r, auth.s);
    }

    function _deployed(address split, bytes32 salt) private returns (address forwarder) {
        if (split == address(0)) revert ZeroSplit();
        bytes32 boundSalt = keccak256(abi.encode(split, salt));
        forwarder = Clones.predictDeterministicAddress(implementation, boundSalt);
        if (forwarder.code.length == 0) {
            Clones.cloneDeterministic(implementation, boundSalt);
            PaymentForwarderV2(payable(forwarder)).initialize(split);
        }
    }
}
