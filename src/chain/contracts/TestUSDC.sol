// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import "@openzeppelin/contracts/token/ERC20/ERC20.sol";

/// @title A 6-decimal stand-in for USDC on the dev chain.
/// @notice It has no value: anyone may mint, so a developer can fund any wallet they test with.
contract TestUSDC is ERC20 {
    constructor(address[] memory holders, uint256 amountEach) ERC20("USD Coin (test)", "USDC") {
        for (uint256 i = 0; i < holders.length; i++) {
            _mint(holders[i], amountEach);
        }
    }

    function decimals() public pure override returns (uint8) {
        return 6;
    }

    function mint(address to, uint256 amount) external {
        _mint(to, amount);
    }
}
